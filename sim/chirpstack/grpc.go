package chirpstack

import (
	"context"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chirpstack/chirpstack/api/go/v4/api"
)

// fPortInvalid is ChirpStack's validation error for an FPort of 0.
const fPortInvalid = "Validation error: FPort must be between 1 - 255"

// deviceService serves api.DeviceService's queue methods; every other
// method answers Unimplemented.
type deviceService struct {
	api.UnimplementedDeviceServiceServer
	s *Sim
}

// authenticate checks the authorization metadata as ChirpStack's
// interceptor and validator do: "Bearer <token>" with a known token, else
// Unauthenticated.
func (s *Sim) authenticate(ctx context.Context) error {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get("authorization")
	if len(vals) == 0 {
		return status.Error(codes.Unauthenticated, "no authorization provided")
	}
	tok, ok := strings.CutPrefix(vals[0], "Bearer ")
	if !ok {
		return status.Error(codes.Unauthenticated, "authorization metadata must be in format 'Bearer <TOKEN>")
	}
	if !s.validToken(tok) {
		return status.Error(codes.Unauthenticated, "InvalidToken")
	}
	return nil
}

func (s *Sim) authUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := s.authenticate(ctx); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (s *Sim) authStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := s.authenticate(ss.Context()); err != nil {
		return err
	}
	return handler(srv, ss)
}

var errUnavailable = status.Error(codes.Unavailable, "chirpstack sim: shutting down")

// lookup parses a request's DevEUI and finds the device. A malformed EUI
// is Internal (ChirpStack maps its lrwn error so); an unknown device is
// what Config.UnknownDevice says, with dev nil and err nil meaning "go on
// as if the device had nothing queued" (an admin key's GetQueue and
// FlushQueue). Lock held.
func (s *Sim) lookup(devEUI string) (dev *device, eui string, err error) {
	eui, problem := apiEUI(devEUI)
	if problem != "" {
		return nil, "", status.Error(codes.Internal, problem)
	}
	if dev = s.devices[eui]; dev != nil {
		return dev, eui, nil
	}
	switch s.cfg.UnknownDevice {
	case UnknownDeviceTenantKey:
		return nil, eui, status.Error(codes.Unauthenticated, "")
	case UnknownDeviceAdminKey:
		return nil, eui, nil
	default:
		return nil, eui, status.Errorf(codes.NotFound, "Object does not exist (id: %s)", eui)
	}
}

// Enqueue adds an item to a device queue, as ChirpStack's
// DeviceService.Enqueue: it flushes the queue's items that are not pending
// first when asked, checks the FPort (taken modulo 256, as ChirpStack casts
// it to a byte), and assigns the item a new UUID.
func (d *deviceService) Enqueue(_ context.Context, req *api.EnqueueDeviceQueueItemRequest) (*api.EnqueueDeviceQueueItemResponse, error) {
	s := d.s
	rq := req.GetQueueItem()
	if rq == nil {
		return nil, status.Error(codes.InvalidArgument, "queue_item is missing")
	}
	var id string
	var err error
	ran := s.do(func() {
		var dev *device
		var eui string
		dev, eui, err = s.lookup(rq.GetDevEui())
		if err != nil {
			return
		}
		if req.GetFlushQueue() && dev != nil {
			s.flush(dev, true)
		}
		data := append([]byte(nil), rq.GetData()...)
		if rq.GetObject() != nil {
			// ChirpStack looks the device up, then encodes the object with
			// the device profile's codec: none here, which gives no bytes.
			if dev == nil {
				err = status.Errorf(codes.NotFound, "Object does not exist (id: %s)", eui)
				return
			}
			data = nil
		}
		fPort := uint32(uint8(rq.GetFPort()))
		if fPort == 0 {
			err = status.Error(codes.InvalidArgument, fPortInvalid)
			return
		}
		var expires time.Time
		if ts := rq.GetExpiresAt(); ts != nil {
			if e := ts.CheckValid(); e != nil {
				err = status.Error(codes.Internal, e.Error())
				return
			}
			expires = ts.AsTime()
		}
		id = newUUID(s.idRng)
		if s.cfg.HonorQueueItemID && rq.GetId() != "" {
			if id, err = parseUUID(rq.GetId()); err != nil {
				err = status.Error(codes.InvalidArgument, err.Error())
				return
			}
		}
		if dev == nil { // an admin key: the insert fails on the foreign key
			err = status.Error(codes.Internal, `insert or update on table "device_queue_item" violates foreign key constraint "device_queue_item_dev_eui_fkey"`)
			return
		}
		if s.hasItem(id) {
			err = status.Errorf(codes.AlreadyExists, "Object already exists (id: %s)", id)
			return
		}
		qi := &item{QueueItem: QueueItem{
			ID: id, DevEUI: eui, FPort: fPort, Confirmed: rq.GetConfirmed(),
			Data: data, IsEncrypted: rq.GetIsEncrypted(),
			ExpiresAt: expires, EnqueuedAt: time.Now(), Source: "grpc",
		}}
		if qi.IsEncrypted {
			qi.FCntDown = rq.GetFCntDown()
		}
		s.enqueue(dev, qi)
	})
	if !ran {
		return nil, errUnavailable
	}
	if err != nil {
		return nil, err
	}
	return &api.EnqueueDeviceQueueItemResponse{Id: id}, nil
}

// GetQueue lists a device's queue, pending items included, in enqueue
// order. ChirpStack ignores count_only; so does the simulator.
func (d *deviceService) GetQueue(_ context.Context, req *api.GetDeviceQueueItemsRequest) (*api.GetDeviceQueueItemsResponse, error) {
	s := d.s
	resp := &api.GetDeviceQueueItemsResponse{}
	var err error
	ran := s.do(func() {
		var dev *device
		dev, _, err = s.lookup(req.GetDevEui())
		if err != nil || dev == nil {
			return
		}
		for _, qi := range dev.queue {
			pb := &api.DeviceQueueItem{
				Id: qi.ID, DevEui: qi.DevEUI, Confirmed: qi.Confirmed, FPort: qi.FPort,
				Data: append([]byte(nil), qi.Data...), IsPending: qi.pending,
				FCntDown: qi.FCntDown, IsEncrypted: qi.IsEncrypted,
			}
			if !qi.ExpiresAt.IsZero() {
				pb.ExpiresAt = timestamppb.New(qi.ExpiresAt)
			}
			resp.Result = append(resp.Result, pb)
		}
		resp.TotalCount = uint32(len(resp.Result))
	})
	if !ran {
		return nil, errUnavailable
	}
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// FlushQueue removes every item of a device queue, pending ones too.
func (d *deviceService) FlushQueue(_ context.Context, req *api.FlushDeviceQueueRequest) (*emptypb.Empty, error) {
	s := d.s
	var err error
	ran := s.do(func() {
		var dev *device
		dev, _, err = s.lookup(req.GetDevEui())
		if err == nil && dev != nil {
			s.flush(dev, false)
		}
	})
	if !ran {
		return nil, errUnavailable
	}
	if err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}
